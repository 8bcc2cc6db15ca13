"""The Causal tab: activation patching beside the heads' roles."""
