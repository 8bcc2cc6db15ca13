"""The A/B compare page of the playground."""
