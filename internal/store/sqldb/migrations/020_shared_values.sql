-- Values one controller computes and every controller on the database
-- reads (docs/scaling.md): the price feed's last good rate table, polled by
-- the controller holding the price-feed duty. updated_at is unix micros of
-- the writer's clock; a write older than the stored one is ignored, so a
-- holder that lost its lease mid-poll cannot roll the value back.
CREATE TABLE shared_values (
    name       TEXT PRIMARY KEY CHECK (name <> ''),
    value      TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
