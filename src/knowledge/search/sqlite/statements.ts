import type BetterSqlite3 from 'better-sqlite3';

/** A prepared statement by its SQL, prepared once per connection. */
export type Statements = (sql: string) => BetterSqlite3.Statement;

/** Statements cached by their SQL: preparing costs more than running most of these queries. */
export function statementCache(db: BetterSqlite3.Database): Statements {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return (sql) => {
    let statement = cache.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      cache.set(sql, statement);
    }
    return statement;
  };
}
