"""Looking after an install: the index's state (status), the checks of `doctor`, the
per-vault user service (user_service) and the example configuration written to a file
(config_file)."""
