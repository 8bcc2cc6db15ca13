"""The Circuits tab: each head's QK and OV circuits over tokens, its copying score, and how heads compose."""
