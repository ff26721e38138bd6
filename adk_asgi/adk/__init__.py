"""ADK's internals behind one door: :mod:`.private` is the one module of the package that uses
google-adk's private modules, names and attributes, each use with the ADK behaviour it relies on,
why no public API serves, and what upstream change would remove it
(docs/internals/architecture.md#adks-internals). The bottom layer, sans-I/O: every layer may
import it, and it imports nothing of the package — only ADK.

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""
