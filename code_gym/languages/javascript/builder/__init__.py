"""The task builder for npm packages with tests: tree-sitter mutations (`mutations`) and task
statements from the failing tests' messages (`statement`). Reached from outside through the
adapter: `code_gym.languages.get("javascript").builder`, `.mutations`."""
