"""What a headless command needs before the CLI's own modules load: standard library only, below both the entry
point (visualizer/__main__.py) and visualizer/cli, so neither imports the other's package to reach it."""
