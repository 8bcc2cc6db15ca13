"""The Lessons dock: the lesson list, the current step and its explanation, and the frame around what a step shows."""
