"""The operator's commands (``playtable ...``): run the stack, regenerate the contract, move
matches in and out as files, verify the stored matches, and measure."""
