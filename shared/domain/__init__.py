"""Domain contracts between services and with clients: messages, the rules API, hosting,
match files and commitments."""
