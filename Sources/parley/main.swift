import ParleyCLI
