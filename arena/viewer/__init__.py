"""The match viewer: a web page the arena serves, fed by a WebSocket event stream.

``stream`` turns a live game or a replay file into one JSON event format;
``server`` serves the page and the stream; ``static/`` is the page itself.
"""
