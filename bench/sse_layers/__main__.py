"""``python -m bench.sse_layers``."""

from bench.sse_layers.run import main

if __name__ == "__main__":
    main()
