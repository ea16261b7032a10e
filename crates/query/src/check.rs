//! The statement check: one read-only query, and every relation it names
//! (with where it is named) for binding against the store.

use crate::*;

/// What a query reads, found by walking its syntax tree.
#[derive(Debug, Default)]
pub(crate) struct Relations {
    /// Every name a query of the statement defines with `WITH name AS (…)`,
    /// at any depth.
    pub(crate) ctes: BTreeSet<String>,
    /// Every plain table reference (`FROM name`), in order of appearance,
    /// as polars will look it up (quotes removed, case kept).
    pub(crate) tables: Vec<String>,
}

/// Walks every table factor of a statement, at every depth (subqueries in
/// FROM, WHERE, SELECT lists, CTE bodies, joins, set operations).
///
/// This is the whole defence against reading outside the store: polars-sql
/// reads a file for any table factor with arguments (`read_csv('/etc/…')`,
/// and also `read_csv.x('/etc/…')`, since it looks at the first name part
/// only), so every such factor is refused whatever its name, quoting or
/// case; only bare one-part names, subqueries, nested joins and `UNNEST`
/// (which reads only its literal arrays) pass. Each bare name is then bound
/// by [`plan`] or left to a CTE; polars' context holds nothing else.
pub(crate) struct RelationWalker<'a> {
    sql: &'a str,
    found: Relations,
}

/// A parser span's start as (line, column), when the parser knows it.
pub(crate) fn position(span: sqlparser::tokenizer::Span) -> Option<(usize, usize)> {
    (span.start.line > 0).then_some((span.start.line as usize, span.start.column as usize))
}

impl RelationWalker<'_> {
    fn refuse(&self, what: &str, span: sqlparser::tokenizer::Span) -> QueryError {
        let at = position(span);
        QueryError::Sql {
            message: format!(
                "{what} is not allowed: queries read the tables ragprobe binds (kinds, ids, --table NAME=FILE)"
            ),
            at: at.or_else(|| find_word(self.sql, what)),
        }
    }
}

impl sqlparser::ast::Visitor for RelationWalker<'_> {
    type Break = QueryError;

    fn pre_visit_query(&mut self, q: &sqlparser::ast::Query) -> std::ops::ControlFlow<QueryError> {
        for cte in q.with.iter().flat_map(|w| w.cte_tables.iter()) {
            self.found.ctes.insert(cte.alias.name.value.clone());
        }
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(
        &mut self,
        factor: &sqlparser::ast::TableFactor,
    ) -> std::ops::ControlFlow<QueryError> {
        use sqlparser::ast::{Spanned, TableFactor};
        use std::ops::ControlFlow::{Break, Continue};
        match factor {
            TableFactor::Table { name, args, .. } => {
                if args.is_some() {
                    return Break(self.refuse(&format!("table function `{name}(…)`"), name.span()));
                }
                match name.0.as_slice() {
                    [part] => match part.as_ident() {
                        Some(ident) => {
                            self.found.tables.push(ident.value.clone());
                            Continue(())
                        }
                        None => Break(self.refuse(&format!("table `{name}`"), name.span())),
                    },
                    _ => Break(QueryError::Sql {
                        message: format!(
                            "`{name}`: a table name has one part (a kind, a quoted id or a --table name), not a schema-qualified name"
                        ),
                        at: position(name.span()),
                    }),
                }
            }
            TableFactor::Derived { .. }
            | TableFactor::NestedJoin { .. }
            | TableFactor::UNNEST { .. } => Continue(()),
            other => {
                let text = other.to_string();
                let head: String = text.chars().take(40).collect();
                Break(self.refuse(&format!("table expression `{head}`"), other.span()))
            }
        }
    }
}

/// Parses `sql`: exactly one SELECT (or WITH … SELECT), parsed as polars
/// parses it (generic dialect, trailing commas). Returns what it reads and
/// whether it orders its rows.
pub(crate) fn check_statement(sql: &str) -> Result<(Relations, bool)> {
    use sqlparser::ast::{Statement, Visit};
    let dialect = sqlparser::dialect::GenericDialect {};
    let parsed = sqlparser::parser::Parser::new(&dialect)
        .with_options(sqlparser::parser::ParserOptions::new().with_trailing_commas(true))
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements());
    let statements = parsed.map_err(|e| {
        let text = e.to_string();
        let text = text.strip_prefix("sql parser error: ").unwrap_or(&text);
        let (text, at) = split_position(text);
        QueryError::Sql {
            message: format!("SQL syntax: {text}"),
            at: at.or_else(|| Some(line_col(sql, sql.trim_end().len()))),
        }
    })?;
    let [statement @ Statement::Query(q)] = statements.as_slice() else {
        return Err(QueryError::Sql {
            message: format!(
                "expected one SELECT statement, found {}",
                match statements.len() {
                    1 => "another kind of statement".to_string(),
                    n => format!("{n} statements"),
                }
            ),
            at: None,
        });
    };
    let mut walker = RelationWalker {
        sql,
        found: Relations::default(),
    };
    if let std::ops::ControlFlow::Break(e) = statement.visit(&mut walker) {
        return Err(e);
    }
    Ok((walker.found, q.order_by.is_some()))
}
