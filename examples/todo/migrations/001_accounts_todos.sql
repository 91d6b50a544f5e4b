-- Accounts and their todos. Portable SQL: SQLite and PostgreSQL both run this file.
-- Todo ids count per account (accounts.next_todo), so no auto-increment column is needed
-- (INTEGER PRIMARY KEY is SQLite's, IDENTITY/SERIAL PostgreSQL's).
CREATE TABLE accounts (
    name TEXT PRIMARY KEY,
    salt TEXT NOT NULL,                     -- hex
    hash TEXT NOT NULL,                     -- hex of PBKDF2-HMAC-SHA256(password, salt)
    next_todo BIGINT NOT NULL DEFAULT 1
);

CREATE TABLE todos (
    account TEXT NOT NULL REFERENCES accounts (name) ON DELETE CASCADE,
    id BIGINT NOT NULL,
    title TEXT NOT NULL,
    done BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (account, id)
);
