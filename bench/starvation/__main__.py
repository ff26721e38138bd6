"""``python -m bench.starvation``."""

from bench.starvation.run import main

if __name__ == "__main__":
    main()
