-- The database of the async-db, crud, api-4, api-16 and production-stack profiles: the items
-- table (100,000 rows, the schema the profile pages give, no index on price) and the users of
-- /api/me, made deterministically (every row is a function of its id) so every run and every
-- machine has the same data. psql -v ON_ERROR_STOP=1 -f arena/seed.sql
SET client_min_messages = warning;
DROP TABLE IF EXISTS items;
DROP TABLE IF EXISTS users;

CREATE TABLE items (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    price INTEGER NOT NULL,
    quantity INTEGER NOT NULL,
    active BOOLEAN NOT NULL,
    tags JSONB NOT NULL,
    rating_score INTEGER NOT NULL,
    rating_count INTEGER NOT NULL
);

INSERT INTO items (id, name, category, price, quantity, active, tags, rating_score, rating_count)
SELECT i,
       (ARRAY['Alpha', 'Pro', 'Core', 'Ultra', 'Nano', 'Prime', 'Flex', 'Mega'])[1 + i % 8] || ' ' ||
       (ARRAY['Widget', 'Valve', 'Relay', 'Sensor', 'Gadget', 'Module'])[1 + (i / 8) % 6] || ' ' || i,
       (ARRAY['electronics', 'tools', 'office', 'home', 'sports', 'toys'])[1 + (i * 7) % 6],
       1 + (i * 7919) % 500,
       1 + (i * 104729) % 100,
       i % 5 <> 0,
       (SELECT jsonb_agg(t ORDER BY n)
          FROM unnest(ARRAY['fast', 'new', 'sale', 'heavy-duty', 'popular', 'wireless'])
               WITH ORDINALITY AS x(t, n)
         WHERE (i >> (n::int - 1)) % 2 = 1 OR n = 1 + i % 6),
       10 + (i * 31) % 41,
       1 + (i * 613) % 500
FROM generate_series(1::bigint, 100000) AS i;

CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    plan TEXT NOT NULL
);

INSERT INTO users (id, name, email, plan) VALUES
    (1, 'Ada Brooks', 'ada@example.com', 'free'),
    (7, 'Ben Ortiz', 'ben@example.com', 'team'),
    (42, 'Alice Chen', 'alice@example.com', 'pro'),
    (100, 'Chen Wei', 'chen@example.com', 'enterprise');

ANALYZE items;
ANALYZE users;
