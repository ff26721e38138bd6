"""``python -m bench.session_reads``."""

from bench.session_reads.run import main

if __name__ == "__main__":
    main()
