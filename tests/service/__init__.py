"""The HTTP service and its store: each file starts a server in a subprocess or a database (marked `service`)."""
