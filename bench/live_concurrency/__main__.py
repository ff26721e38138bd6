"""``python -m bench.live_concurrency``."""

from bench.live_concurrency.run import main

if __name__ == "__main__":
    main()
