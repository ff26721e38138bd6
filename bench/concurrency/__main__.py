"""``python -m bench.concurrency``."""

from bench.concurrency.run import main

if __name__ == "__main__":
    main()
