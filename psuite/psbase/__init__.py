"""psbase: an archive of experiments and their runs in an SQL database
(SQLite by default, PostgreSQL for a shared archive), after perfbase."""
