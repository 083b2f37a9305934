"""What an operator runs in production: the ``playtable`` command (cli.py), the local stack and
its gateway, client apps and keys, the keyring, match files in and out, and the verification
of stored matches. The contract, the benchmarks and the fault traffic are development tools in
the repository's ``tools/`` package, which the image does not ship."""
