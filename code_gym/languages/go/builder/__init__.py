"""The task builder for Go packages with tests (Debian's golang-*-dev source trees, or a folder
holding an import path's tree): tree-sitter mutations (`mutations`) and task statements from the
failing tests' messages (`statement`). Reached from outside through the adapter:
`code_gym.languages.get("go").builder`, `.mutations`."""
