"""The Heads tab: head importance maps, the roles table, and role badges for the playground grids."""
