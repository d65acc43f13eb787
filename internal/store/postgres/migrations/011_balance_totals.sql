-- PostgreSQL: running balance totals on the account row, kept by trigger
-- functions on the ledger and the holds (see the common file). The update
-- takes the account row's lock, after the task, attempt and job locks of
-- the transaction that settles (store.JobStore's lock order, account last).
ALTER TABLE accounts ADD COLUMN ledger_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN held_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN active_holds BIGINT NOT NULL DEFAULT 0;

UPDATE accounts SET
    ledger_micros = (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger_entries l WHERE l.account_id = accounts.id),
    held_micros = (SELECT COALESCE(SUM(amount_micros - captured_micros), 0) FROM holds h WHERE h.account_id = accounts.id AND h.status = 'active'),
    active_holds = (SELECT COUNT(*) FROM holds h WHERE h.account_id = accounts.id AND h.status = 'active');

CREATE FUNCTION ledger_entries_total() RETURNS trigger AS $$
BEGIN
    UPDATE accounts SET ledger_micros = ledger_micros + NEW.amount_micros WHERE id = NEW.account_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER ledger_entries_total AFTER INSERT ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_entries_total();

CREATE FUNCTION holds_total() RETURNS trigger AS $$
DECLARE
    delta_held BIGINT := 0;
    delta_count BIGINT := 0;
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'holds are settled, never deleted';
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.status = 'active' THEN
        delta_held := delta_held - (OLD.amount_micros - OLD.captured_micros);
        delta_count := delta_count - 1;
    END IF;
    IF NEW.status = 'active' THEN
        delta_held := delta_held + (NEW.amount_micros - NEW.captured_micros);
        delta_count := delta_count + 1;
    END IF;
    IF delta_held <> 0 OR delta_count <> 0 THEN
        UPDATE accounts SET held_micros = held_micros + delta_held, active_holds = active_holds + delta_count
        WHERE id = NEW.account_id;
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER holds_total AFTER INSERT OR UPDATE OR DELETE ON holds
    FOR EACH ROW EXECUTE FUNCTION holds_total();
