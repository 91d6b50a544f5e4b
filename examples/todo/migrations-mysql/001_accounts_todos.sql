-- Accounts and their todos, in MariaDB's dialect: migrations/001_accounts_todos.sql is the
-- portable version that SQLite and PostgreSQL run, but MariaDB cannot index a TEXT column
-- without a length, so the keys here are VARCHAR(255). InnoDB for transactions and foreign keys;
-- utf8mb4_nopad_bin compares the keys byte for byte, case and trailing spaces included, as TEXT
-- in SQLite and PostgreSQL does (MariaDB's default collation would make "Ann" the same name as
-- "ann"; on MySQL 8, which lacks it, utf8mb4_0900_bin is the equivalent).
-- Todo ids count per account (accounts.next_todo), so no AUTO_INCREMENT column is needed.
CREATE TABLE accounts (
    name VARCHAR(255) PRIMARY KEY,
    salt TEXT NOT NULL,                     -- hex
    hash TEXT NOT NULL,                     -- hex of PBKDF2-HMAC-SHA256(password, salt)
    next_todo BIGINT NOT NULL DEFAULT 1
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- The foreign key as a table constraint: MySQL 8 ignores REFERENCES written on a column.
CREATE TABLE todos (
    account VARCHAR(255) NOT NULL,
    id BIGINT NOT NULL,
    title MEDIUMTEXT NOT NULL,              -- TEXT stops at 64 KiB; request bodies reach 1 MiB
    done BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (account, id),
    FOREIGN KEY (account) REFERENCES accounts (name) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
