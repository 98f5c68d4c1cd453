// Package query evaluates the mql language against a store: a Session runs scripts and
// statements through mql's public API and returns a Result for each. The language's syntax
// (lexer, grammar, parser, AST, printer, syntax errors) is package syntax's; this package
// names its types and functions too (query.Parse, query.Stmt, …), for its callers.
// docs/LANGUAGE.md is the language reference.
package query
