"""``mmconvert eval``: the same items as text and as images, paired, on inspect_ai."""
