"""Helpers that several test modules share, one module per concern.

`events` reads lists of TurnEvents, `servers` makes settings for real test servers (and a
turn parked before one stops), `waiting` polls for a condition, `images` holds test
images. The client tests talk through lives beside this package, in `tests/wire.py`.
"""
