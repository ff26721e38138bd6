"""``python -m bench.live``."""

from bench.live.run import main

if __name__ == "__main__":
    main()
