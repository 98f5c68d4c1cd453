// Package syntax is the mql language's syntax: a lexer and a participle grammar, an AST with
// positions, and a printer that writes canonical source. docs/LANGUAGE.md is the language
// reference.
//
// Parse reads a script, ParseStmt one statement, and Complete tells a REPL whether its input
// ends between statements. Errors name the file, line and column and say what was expected;
// they match ErrSyntax.
//
// The package does not import the library (package mql): the library builds the statements
// it records for a run as values of this AST and prints them with String, the printer every
// surface prints with, and package query, which evaluates statements against the library,
// imports both.
package syntax
