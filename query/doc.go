// Package query is the front end of the mql language: a lexer and a
// participle grammar, an AST with positions, and a printer that writes
// canonical source. docs/LANGUAGE.md is the language reference.
//
// Parse reads a script, ParseStmt one statement, and Complete tells a REPL
// whether its input ends between statements. Errors name the file, line and
// column and say what was expected; they match ErrSyntax.
package query
