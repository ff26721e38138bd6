"""``python -m bench.slow_clients``."""

from bench.slow_clients.run import main

if __name__ == "__main__":
    main()
