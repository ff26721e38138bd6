"""``python -m bench.throughput``."""

from bench.throughput.run import main

if __name__ == "__main__":
    main()
