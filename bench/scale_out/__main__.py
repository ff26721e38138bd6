"""``python -m bench.scale_out``."""

from bench.scale_out.run import main

if __name__ == "__main__":
    main()
