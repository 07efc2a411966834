"""Talking to a live or throwaway Kubernetes cluster: the throwaway control plane's lifecycle
(``controlplane``: the Go binary of ``controlplane/`` started in the background, waited for, stopped).

A shell-side package: it starts processes and reads the files they write. Nothing below the CLI and
the API imports it (the layer contract in ``pyproject.toml``)."""
