"""Classic-control env package: see README.md."""
