import { type Kysely, sql } from 'kysely';

// Connectors, credentials and CC pairs carry only what ingestion, connector-docs and document sets
// need today; the connectors issue extends them. Documents are the source of truth of the search
// index: `chunks` is itself the Postgres full-text index, and every other index is rebuilt from it.
const statements = [
  `CREATE TABLE connectors (
    id serial PRIMARY KEY,
    name text NOT NULL,
    source text NOT NULL,
    input_type text NOT NULL CHECK (input_type IN ('poll', 'event', 'load_state', 'slim_retrieval')),
    connector_specific_config jsonb NOT NULL DEFAULT '{}',
    refresh_freq integer,
    prune_freq integer,
    indexing_start timestamptz,
    access_type text NOT NULL DEFAULT 'public' CHECK (access_type IN ('public', 'private', 'sync')),
    is_system boolean NOT NULL DEFAULT false,
    creator_id uuid REFERENCES users(id) ON DELETE SET NULL,
    time_created timestamptz NOT NULL DEFAULT now(),
    time_updated timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE credentials (
    id serial PRIMARY KEY,
    name text,
    source text NOT NULL,
    credential_json text NOT NULL DEFAULT '',
    admin_public boolean NOT NULL DEFAULT true,
    curator_public boolean NOT NULL DEFAULT false,
    user_id uuid REFERENCES users(id) ON DELETE SET NULL,
    time_created timestamptz NOT NULL DEFAULT now(),
    time_updated timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE cc_pairs (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    connector_id integer NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
    credential_id integer NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
    status text NOT NULL DEFAULT 'scheduled'
      CHECK (status IN ('scheduled', 'initial_indexing', 'active', 'paused', 'deleting', 'invalid')),
    access_type text NOT NULL DEFAULT 'public' CHECK (access_type IN ('public', 'private', 'sync')),
    is_system boolean NOT NULL DEFAULT false,
    creator_id uuid REFERENCES users(id) ON DELETE SET NULL,
    in_repeated_error_state boolean NOT NULL DEFAULT false,
    last_successful_index_time timestamptz,
    last_pruned timestamptz,
    time_created timestamptz NOT NULL DEFAULT now(),
    time_updated timestamptz NOT NULL DEFAULT now(),
    UNIQUE (connector_id, credential_id)
  )`,
  `CREATE TABLE cc_pair_groups (
    cc_pair_id integer NOT NULL REFERENCES cc_pairs(id) ON DELETE CASCADE,
    group_id integer NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    PRIMARY KEY (cc_pair_id, group_id)
  )`,
  `CREATE TABLE document_set_cc_pairs (
    document_set_id integer NOT NULL REFERENCES document_sets(id) ON DELETE CASCADE,
    cc_pair_id integer NOT NULL REFERENCES cc_pairs(id) ON DELETE CASCADE,
    PRIMARY KEY (document_set_id, cc_pair_id)
  )`,
  `CREATE INDEX document_set_cc_pairs_cc_pair_idx ON document_set_cc_pairs (cc_pair_id)`,
  `CREATE TABLE documents (
    id text PRIMARY KEY,
    semantic_id text NOT NULL,
    title text NOT NULL,
    link text,
    source text NOT NULL,
    from_ingestion_api boolean NOT NULL DEFAULT false,
    metadata jsonb NOT NULL DEFAULT '{}',
    tags text[] NOT NULL DEFAULT '{}',
    primary_owners jsonb NOT NULL DEFAULT '[]',
    secondary_owners jsonb NOT NULL DEFAULT '[]',
    doc_updated_at timestamptz NOT NULL,
    content_hash text NOT NULL,
    chunk_count integer NOT NULL DEFAULT 0,
    is_public boolean NOT NULL DEFAULT false,
    access_user_ids uuid[] NOT NULL DEFAULT '{}',
    access_group_ids integer[] NOT NULL DEFAULT '{}',
    hidden boolean NOT NULL DEFAULT false,
    boost integer NOT NULL DEFAULT 0,
    time_created timestamptz NOT NULL DEFAULT now(),
    time_updated timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX documents_ingestion_idx ON documents (from_ingestion_api) WHERE from_ingestion_api`,
  `CREATE INDEX documents_updated_idx ON documents (doc_updated_at)`,
  `CREATE INDEX documents_tags_idx ON documents USING gin (tags)`,
  `CREATE TABLE document_by_cc_pair (
    document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    cc_pair_id integer NOT NULL REFERENCES cc_pairs(id) ON DELETE CASCADE,
    has_been_indexed boolean NOT NULL DEFAULT true,
    PRIMARY KEY (document_id, cc_pair_id)
  )`,
  `CREATE INDEX document_by_cc_pair_cc_pair_idx ON document_by_cc_pair (cc_pair_id)`,
  `CREATE TABLE chunks (
    document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_id integer NOT NULL,
    title text NOT NULL,
    content text NOT NULL,
    blurb text NOT NULL,
    link text,
    section_links jsonb NOT NULL DEFAULT '{}',
    token_count integer NOT NULL,
    search_vector tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', content), 'D')
    ) STORED,
    PRIMARY KEY (document_id, chunk_id)
  )`,
  `CREATE INDEX chunks_search_idx ON chunks USING gin (search_vector)`,
  // Words seen in the index, for typo correction with pg_trgm (a fallback when a query finds little).
  `CREATE TABLE search_vocabulary (term text PRIMARY KEY)`,
  `CREATE INDEX search_vocabulary_trgm_idx ON search_vocabulary USING gin (term gin_trgm_ops)`,
  // The system connector, credential and CC pair that ingestion uses by default: public, never scheduled.
  `INSERT INTO connectors (name, source, input_type, connector_specific_config, access_type, is_system)
    VALUES ('Ingestion API', 'ingestion_api', 'load_state', '{}', 'public', true)`,
  `INSERT INTO credentials (name, source, admin_public) VALUES ('Ingestion API', 'ingestion_api', true)`,
  `INSERT INTO cc_pairs (name, connector_id, credential_id, status, access_type, is_system)
    SELECT 'Ingestion API', c.id, k.id, 'active', 'public', true
    FROM connectors c, credentials k WHERE c.source = 'ingestion_api' AND k.source = 'ingestion_api'`,
];

/** pgvector is optional: PGlite ships it, many Postgres servers do not. Without it embeddings are real[]. */
async function createEmbeddingsTable(db: Kysely<any>): Promise<void> {
  const available = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'`.execute(db);
  let type = 'real[]';
  if ((available.rows[0]?.n ?? 0) > 0) {
    try {
      await sql.raw('CREATE EXTENSION IF NOT EXISTS vector').execute(db);
      type = 'vector';
    } catch {
      // Listed but not installable (no privilege): fall back to arrays.
    }
  }
  await sql
    .raw(`CREATE TABLE chunk_embeddings (
    document_id text NOT NULL,
    chunk_id integer NOT NULL,
    embedding ${type} NOT NULL,
    PRIMARY KEY (document_id, chunk_id),
    FOREIGN KEY (document_id, chunk_id) REFERENCES chunks(document_id, chunk_id) ON DELETE CASCADE
  )`)
    .execute(db);
}

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
  await createEmbeddingsTable(db);
}
