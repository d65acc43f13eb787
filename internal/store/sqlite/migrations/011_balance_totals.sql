-- SQLite: running balance totals on the account row, kept by triggers on
-- the ledger and the holds (see the common file). Holds are never deleted.
ALTER TABLE accounts ADD COLUMN ledger_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN held_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN active_holds BIGINT NOT NULL DEFAULT 0;

UPDATE accounts SET
    ledger_micros = (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger_entries l WHERE l.account_id = accounts.id),
    held_micros = (SELECT COALESCE(SUM(amount_micros - captured_micros), 0) FROM holds h WHERE h.account_id = accounts.id AND h.status = 'active'),
    active_holds = (SELECT COUNT(*) FROM holds h WHERE h.account_id = accounts.id AND h.status = 'active');

CREATE TRIGGER ledger_entries_total AFTER INSERT ON ledger_entries
BEGIN
    UPDATE accounts SET ledger_micros = ledger_micros + NEW.amount_micros WHERE id = NEW.account_id;
END;

CREATE TRIGGER holds_total_insert AFTER INSERT ON holds WHEN NEW.status = 'active'
BEGIN
    UPDATE accounts SET held_micros = held_micros + NEW.amount_micros - NEW.captured_micros,
                        active_holds = active_holds + 1
    WHERE id = NEW.account_id;
END;

CREATE TRIGGER holds_total_update AFTER UPDATE ON holds
BEGIN
    UPDATE accounts SET
        held_micros = held_micros
            - (CASE WHEN OLD.status = 'active' THEN OLD.amount_micros - OLD.captured_micros ELSE 0 END)
            + (CASE WHEN NEW.status = 'active' THEN NEW.amount_micros - NEW.captured_micros ELSE 0 END),
        active_holds = active_holds
            - (CASE WHEN OLD.status = 'active' THEN 1 ELSE 0 END)
            + (CASE WHEN NEW.status = 'active' THEN 1 ELSE 0 END)
    WHERE id = NEW.account_id;
END;

CREATE TRIGGER holds_no_delete BEFORE DELETE ON holds
BEGIN
    SELECT RAISE(ABORT, 'holds are settled, never deleted');
END;
