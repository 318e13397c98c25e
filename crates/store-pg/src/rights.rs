//! What a host's database role may do: the schema's version 6, which makes the database
//! itself refuse a host what belongs to the lead or to another host, and
//! the SQL that gives the group role `swarm_host` its table rights (run by the migration
//! step once the role exists).
//!
//! The model is Kubernetes' NodeRestriction: a host's role changes only what belongs to
//! the agents placed on it. Which agents those are, the roster says: the lead writes a
//! teammate's entry with `"dbRole": "<role>"` when it places the teammate on a host
//! with a role of its own, and a host cannot change that field (or any entry but its
//! own agents'). A role is a host's when it is a direct member of `swarm_host`; every
//! other role (the tables' owner, which row-level security does not restrict; any role
//! the owner granted rights) is the lead's side and may do everything.
//!
//! Invariants:
//! - rows a host may not see are invisible to it, not errors: it reads only the teams it
//!   has agents in, and of their messages only those to or from its agents; it reads no
//!   launch records at all (it has no grant on them);
//! - a write a host may not make fails loudly ([`REFUSED`], "a host's role may not …"),
//!   never silently: the checks are triggers, which see the row before and after (a write
//!   to a row it cannot see touches nothing, as for any row that is not there);
//! - the lead's side pays one catalog lookup per row written, and no row filter (the
//!   owner bypasses row-level security);
//! - the functions the policies call run with a fixed `search_path`, so a host cannot
//!   put an object of its own in their way.

/// The SQLSTATE of a host's write the checks refused (a class of swarm's own).
pub const REFUSED: &str = "SWH01";

/// The schema's version 6: row-level security on every team table, the checks a host's
/// writes pass, and the functions both use.
pub(crate) const HOST_RIGHTS: &str = r"
CREATE FUNCTION swarm_is_host() RETURNS boolean LANGUAGE sql STABLE
SET search_path = pg_catalog AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_auth_members m
          JOIN pg_roles g ON g.oid = m.roleid
          JOIN pg_roles u ON u.oid = m.member
         WHERE g.rolname = 'swarm_host' AND u.rolname = session_user)
$$;
CREATE FUNCTION swarm_my_agents() RETURNS text[] LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
    SELECT coalesce(array_agg(t.name || '/' || lower(m->>'name')), '{}')
      FROM public.teams t, jsonb_array_elements(t.config->'members') m
     WHERE m->>'dbRole' = session_user
$$;
CREATE FUNCTION swarm_my_teams() RETURNS text[] LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
    SELECT coalesce(array_agg(DISTINCT t.name), '{}')
      FROM public.teams t, jsonb_array_elements(t.config->'members') m
     WHERE m->>'dbRole' = session_user
$$;
CREATE FUNCTION swarm_refuse(what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a host''s role may not %', what USING ERRCODE = 'SWH01';
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['teams', 'task_lists', 'tasks', 'mailboxes', 'messages',
        'approvals', 'agent_states', 'exit_reports', 'holds', 'merge_queues', 'budgets',
        'spend', 'launch_records', 'worktrees', 'rate_gates', 'processes'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY lead ON %I USING (NOT (SELECT swarm_is_host()))
                        WITH CHECK (NOT (SELECT swarm_is_host()))', t);
    END LOOP;
    -- A host reads the teams it has agents in.
    FOREACH t IN ARRAY ARRAY['task_lists', 'tasks', 'mailboxes', 'approvals',
        'agent_states', 'exit_reports', 'holds', 'merge_queues', 'budgets', 'spend',
        'worktrees', 'rate_gates', 'processes'] LOOP
        EXECUTE format('CREATE POLICY host_reads ON %I FOR SELECT
                        USING (team = ANY ((SELECT swarm_my_teams())::text[]))', t);
    END LOOP;
    -- It writes shared rows of those teams (their content checked by the triggers below).
    FOREACH t IN ARRAY ARRAY['tasks', 'mailboxes', 'approvals', 'holds', 'rate_gates',
        'task_lists'] LOOP
        EXECUTE format('CREATE POLICY host_inserts ON %I FOR INSERT
                        WITH CHECK (team = ANY ((SELECT swarm_my_teams())::text[]))', t);
        EXECUTE format('CREATE POLICY host_updates ON %I FOR UPDATE
                        USING (team = ANY ((SELECT swarm_my_teams())::text[]))
                        WITH CHECK (team = ANY ((SELECT swarm_my_teams())::text[]))', t);
    END LOOP;
    -- And its own agents' rows.
    FOREACH t IN ARRAY ARRAY['agent_states', 'exit_reports', 'spend', 'worktrees',
        'processes'] LOOP
        EXECUTE format('CREATE POLICY host_own ON %I FOR ALL
                        USING (team || ''/'' || lower(agent) = ANY ((SELECT swarm_my_agents())::text[]))
                        WITH CHECK (team || ''/'' || lower(agent) = ANY ((SELECT swarm_my_agents())::text[]))', t);
    END LOOP;
END $$;
CREATE POLICY host_reads ON teams FOR SELECT USING (name = ANY ((SELECT swarm_my_teams())::text[]));
CREATE POLICY host_updates ON teams FOR UPDATE USING (name = ANY ((SELECT swarm_my_teams())::text[]));
CREATE POLICY host_deletes ON tasks FOR DELETE USING (team = ANY ((SELECT swarm_my_teams())::text[]));
CREATE POLICY host_mail ON messages FOR SELECT USING (
    team || '/' || lower(agent) = ANY ((SELECT swarm_my_agents())::text[])
    OR team || '/' || lower(envelope->>'from') = ANY ((SELECT swarm_my_agents())::text[]));
CREATE POLICY host_sends ON messages FOR INSERT
    WITH CHECK (team = ANY ((SELECT swarm_my_teams())::text[]));
CREATE POLICY host_acks ON messages FOR UPDATE
    USING (team || '/' || lower(agent) = ANY ((SELECT swarm_my_agents())::text[]));
CREATE POLICY host_clears ON messages FOR DELETE
    USING (team || '/' || lower(agent) = ANY ((SELECT swarm_my_agents())::text[]));

-- The roster: a host changes only its own agents' entries, and of them only what a
-- teammate writes about itself.
CREATE FUNCTION swarm_check_roster() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
DECLARE
    own constant text[] := ARRAY['pid', 'isActive', 'mode', 'cwd', 'tmuxPaneId', 'backendType'];
    o jsonb;
    n jsonb;
BEGIN
    IF NOT swarm_is_host() THEN RETURN NEW; END IF;
    IF NEW.name IS DISTINCT FROM OLD.name
       OR (OLD.config - 'members') IS DISTINCT FROM (NEW.config - 'members')
       OR jsonb_array_length(OLD.config->'members') IS DISTINCT FROM jsonb_array_length(NEW.config->'members') THEN
        PERFORM swarm_refuse('change a team''s roster but its own agents'' entries');
    END IF;
    FOR i IN 0 .. jsonb_array_length(OLD.config->'members') - 1 LOOP
        o := OLD.config->'members'->i;
        n := NEW.config->'members'->i;
        CONTINUE WHEN o = n;
        IF o->>'dbRole' IS DISTINCT FROM session_user OR (o - own) IS DISTINCT FROM (n - own) THEN
            PERFORM swarm_refuse(format('change %s''s roster entry', o->>'name'));
        END IF;
    END LOOP;
    RETURN NEW;
END $$;
CREATE TRIGGER host_check BEFORE UPDATE ON teams FOR EACH ROW EXECUTE FUNCTION swarm_check_roster();

-- Tasks: a host claims, changes and completes only tasks that are free or its agents'; of
-- another's task it may change only the dependency lists (its own new task blocks it).
CREATE FUNCTION swarm_check_task() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
DECLARE
    deps constant text[] := ARRAY['blocks', 'blockedBy'];
    mine text[];
    before jsonb;
BEGIN
    IF NOT swarm_is_host() THEN RETURN coalesce(NEW, OLD); END IF;
    mine := swarm_my_agents();
    IF TG_OP = 'DELETE' THEN
        IF NOT OLD.team || '/' || lower(coalesce(OLD.doc->>'owner', '')) = ANY (mine) THEN
            PERFORM swarm_refuse(format('delete task %s, which is not its agents''', OLD.id));
        END IF;
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.team, NEW.id) IS DISTINCT FROM (OLD.team, OLD.id) THEN
        PERFORM swarm_refuse('move a task');
    END IF;
    -- An upsert's INSERT fires before its conflict is found: it is judged on the row there.
    IF TG_OP = 'UPDATE' THEN
        before := OLD.doc;
    ELSE
        SELECT doc INTO before FROM tasks WHERE team = NEW.team AND id = NEW.id;
    END IF;
    IF coalesce(before->>'owner', '') <> ''
       AND NOT NEW.team || '/' || lower(before->>'owner') = ANY (mine) THEN
        IF (before - deps) IS DISTINCT FROM (NEW.doc - deps) THEN
            PERFORM swarm_refuse(format('change task %s of %s', NEW.id, before->>'owner'));
        END IF;
        RETURN NEW;
    END IF;
    IF coalesce(NEW.doc->>'owner', '') <> ''
       AND NOT NEW.team || '/' || lower(NEW.doc->>'owner') = ANY (mine) THEN
        PERFORM swarm_refuse(format('give task %s to %s', NEW.id, NEW.doc->>'owner'));
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER host_check BEFORE INSERT OR UPDATE OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION swarm_check_task();

-- The task list's high-water mark only grows: a lower one would reuse ids.
CREATE FUNCTION swarm_check_list() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
BEGIN
    IF swarm_is_host() AND (NEW.team IS DISTINCT FROM OLD.team OR NEW.high_water < OLD.high_water) THEN
        PERFORM swarm_refuse('lower a task list''s high-water mark');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER host_check BEFORE UPDATE ON task_lists FOR EACH ROW EXECUTE FUNCTION swarm_check_list();

-- Mail: a host sends as its own agents (or into their own inboxes), and an
-- acknowledgement changes nothing but the acknowledgement.
CREATE FUNCTION swarm_check_message() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
DECLARE
    mine text[];
BEGIN
    IF NOT swarm_is_host() THEN RETURN NEW; END IF;
    mine := swarm_my_agents();
    IF TG_OP = 'INSERT' THEN
        IF NOT (NEW.team || '/' || lower(coalesce(NEW.envelope->>'from', '')) = ANY (mine)
                OR NEW.team || '/' || lower(NEW.agent) = ANY (mine)) THEN
            PERFORM swarm_refuse(format('send as %s', NEW.envelope->>'from'));
        END IF;
    ELSIF (NEW.team, NEW.agent, NEW.seq, NEW.origin, NEW.key, NEW.envelope)
          IS DISTINCT FROM (OLD.team, OLD.agent, OLD.seq, OLD.origin, OLD.key, OLD.envelope)
          OR (OLD.acked IS NOT NULL AND NEW.acked IS DISTINCT FROM OLD.acked) THEN
        PERFORM swarm_refuse('change a message');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER host_check BEFORE INSERT OR UPDATE ON messages
    FOR EACH ROW EXECUTE FUNCTION swarm_check_message();

-- A mailbox's count of writes only grows, except its own agent's (an inbox removed).
CREATE FUNCTION swarm_check_mailbox() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
BEGIN
    IF swarm_is_host() AND (NEW.team, NEW.agent) IS DISTINCT FROM (OLD.team, OLD.agent)
       OR swarm_is_host() AND coalesce(NEW.writes, -1) < coalesce(OLD.writes, 0)
          AND NOT NEW.team || '/' || lower(NEW.agent) = ANY (swarm_my_agents()) THEN
        PERFORM swarm_refuse(format('reset the inbox of %s', OLD.agent));
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER host_check BEFORE UPDATE ON mailboxes FOR EACH ROW EXECUTE FUNCTION swarm_check_mailbox();

-- Approvals: a host asks for its own agents, and may only let its own pending request
-- expire; every decision is the lead's.
CREATE FUNCTION swarm_check_approval() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
DECLARE
    expiry constant text[] := ARRAY['state', 'resolvedMs', 'resolvedBy', 'feedback'];
    mine text[];
BEGIN
    IF NOT swarm_is_host() THEN RETURN NEW; END IF;
    mine := swarm_my_agents();
    IF NOT NEW.team || '/' || lower(coalesce(NEW.doc->>'agent', '')) = ANY (mine) THEN
        PERFORM swarm_refuse(format('ask or answer for %s', NEW.doc->>'agent'));
    END IF;
    IF TG_OP = 'INSERT' AND NEW.doc->>'state' IS DISTINCT FROM 'pending' THEN
        PERFORM swarm_refuse('record a request already decided');
    END IF;
    IF TG_OP = 'UPDATE' AND ((NEW.team, NEW.id) IS DISTINCT FROM (OLD.team, OLD.id)
        OR OLD.doc->>'state' IS DISTINCT FROM 'pending'
        OR NEW.doc->>'state' IS DISTINCT FROM 'expired'
        OR NEW.doc->>'resolvedBy' IS DISTINCT FROM 'timeout'
        OR (OLD.doc - expiry) IS DISTINCT FROM (NEW.doc - expiry)) THEN
        PERFORM swarm_refuse(format('decide request %s', OLD.id));
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER host_check BEFORE INSERT OR UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION swarm_check_approval();

-- Processes: a host registers and beats its own, and never brings one declared dead
-- back (its fence holds).
CREATE FUNCTION swarm_check_process() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
BEGIN
    IF NOT swarm_is_host() THEN RETURN NEW; END IF;
    IF TG_OP = 'INSERT' AND NEW.token <> currval('fences') THEN
        PERFORM swarm_refuse('choose a fencing token');
    END IF;
    IF TG_OP = 'UPDATE' AND ((NEW.token, NEW.team, NEW.agent, NEW.host, NEW.pid, NEW.start_ticks)
            IS DISTINCT FROM (OLD.token, OLD.team, OLD.agent, OLD.host, OLD.pid, OLD.start_ticks)
        OR OLD.dead_at IS NOT NULL AND NEW.dead_at IS DISTINCT FROM OLD.dead_at) THEN
        PERFORM swarm_refuse('change a process''s record but its beat and its end');
    END IF;
    IF NEW.beat_at > clock_timestamp() OR NEW.dead_at > clock_timestamp() THEN
        PERFORM swarm_refuse('date a beat in the future');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER host_check BEFORE INSERT OR UPDATE ON processes
    FOR EACH ROW EXECUTE FUNCTION swarm_check_process();

-- The rights themselves, given to the group role whenever it exists (see `migrate::grant_hosts`).
CREATE FUNCTION swarm_grant_hosts() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    GRANT SELECT ON schema_version, teams, task_lists, tasks, mailboxes, messages, approvals,
        agent_states, exit_reports, holds, merge_queues, budgets, spend, worktrees,
        rate_gates, processes TO swarm_host;
    GRANT UPDATE (config) ON teams TO swarm_host;
    GRANT UPDATE (high_water) ON task_lists TO swarm_host;
    GRANT INSERT, UPDATE, DELETE ON tasks, messages, agent_states, worktrees TO swarm_host;
    GRANT INSERT, UPDATE ON mailboxes, approvals, holds, rate_gates, spend, processes TO swarm_host;
    GRANT INSERT ON exit_reports TO swarm_host;
    GRANT USAGE, SELECT ON SEQUENCE fences, acks TO swarm_host;
END $$;
";

#[cfg(test)]
mod tests {
    #[test]
    fn the_policies_read_the_rosters_field() {
        let field = format!("m->>'{}'", swarm_store::roster::DB_ROLE_FIELD);
        assert_eq!(super::HOST_RIGHTS.matches(&field).count(), 2);
        assert!(
            super::HOST_RIGHTS.contains(&format!("o->>'{}'", swarm_store::roster::DB_ROLE_FIELD))
        );
    }
}
