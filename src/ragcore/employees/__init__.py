"""AI employees: the roles the service can answer as."""
