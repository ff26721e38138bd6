"""``python -m adk_asgi.web web AGENT``: the ``adk-asgi`` command (:mod:`.cli`) without its
script."""

if __name__ == "__main__":
    from adk_asgi.web.cli import main

    raise SystemExit(main())
