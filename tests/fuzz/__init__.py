"""The fuzz suite: generated and broken requests to every RPC, over both wires.

Its settings (seed, number of examples) are in `fuzz/profile.py`; its fixtures (`server`,
`channel`, `http`) are the shared ones of tests/conftest.py.
"""
