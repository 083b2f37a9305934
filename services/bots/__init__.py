"""Bots: players of a seat that see only that seat's view and legal actions, as a client does."""
