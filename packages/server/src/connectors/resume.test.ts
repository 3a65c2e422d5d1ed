import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeWebsite, htmlPage, startFakeWebsite } from '../../../../test/fakes/website.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import type { AttemptRow } from './connectors.repository.ts';
import { connectorTestHelpers } from './connectors.test-helpers.ts';
import { progressOf } from './service/shared.ts';
import type { Source, SourceDocument, SourceDocumentFailure } from './sources/source.ts';

/**
 * A provider that polls (documents updated in the window), like a ticket tracker: items with an
 * update time, each read with one request (counted), and items that fail on their own (poisoned).
 */
const ledger = {
  items: new Map<string, { text: string; updated: Date; poisoned: boolean }>(),
  reads: new Map<string, number>(),
};
const ledgerSource: Source<Record<string, never>, Record<string, never>> = {
  name: 'ledger',
  displayName: 'Ledger',
  needsCredential: false,
  inputTypes: ['poll'],
  validateConfig: () => ({ ok: true, value: {} }),
  validateCredential: () => ({ ok: true, value: {} }),
  async *load({ window }) {
    const documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    for (const [id, item] of ledger.items) {
      if (window.start && item.updated < window.start) continue;
      ledger.reads.set(id, (ledger.reads.get(id) ?? 0) + 1);
      const link = `https://ledger.example/${id}`;
      if (item.poisoned) failures.push({ document_id: `ledger:${id}`, link, message: 'Export too large' });
      else
        documents.push({
          id: `ledger:${id}`,
          semantic_identifier: id,
          sections: [{ text: item.text, link }],
        });
    }
    yield { documents, failures, checkpoint: null };
  },
};

const t = useTestRuntime({
  KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
  KAS_OUTBOUND_RETRIES: '2',
  KAS_CONNECTOR_HEARTBEAT_MS: '100',
  KAS_CONNECTOR_STALE_MS: '1000',
  KAS_CONNECTOR_BACKOFF_MS: '0',
});
const { admin, pass } = t;
const { docIds } = connectorTestHelpers(t);
let site: FakeWebsite;
let counter = 0;

beforeAll(async () => {
  site = await startFakeWebsite();
  t.deps.sources.register(ledgerSource);
});
afterAll(async () => {
  await site.close();
});
beforeEach(() => {
  site.pages.clear();
  site.hits.clear();
  site.statuses.clear();
  site.failWith = null;
  site.delayMs = 0;
  site.rateLimit = { remaining: 0, retryAfter: 1 };
});

async function webPair(basePath: string) {
  counter++;
  const { id: connectorId } = await admin().connectors.create({
    name: `resume site ${counter}`,
    source: 'web',
    input_type: 'poll',
    connector_specific_config: { base_url: `${site.url}${basePath}`, web_connector_type: 'recursive' },
    access_type: 'public',
    refresh_freq: 3600,
  });
  const credential = await admin().connectors.createCredential({ source: 'web', credential_json: {} });
  const pairId = (
    await admin().connectors.createPair({
      connector_id: connectorId,
      credential_id: credential.id,
      name: `resume pair ${counter}`,
    })
  ).data as number;
  return { connectorId, pairId };
}

/** A section whose home page links to every other page: the crawl reads them eight at a time. */
function section(prefix: string, count: number, word: string) {
  const paths = Array.from({ length: count }, (_, i) => (i === 0 ? `${prefix}/` : `${prefix}/p${i}`));
  paths.forEach((path, i) => {
    site.pages.set(
      path,
      htmlPage(`${word} ${i}`, `page ${i} about the ${word}`, i === 0 ? paths.slice(1) : []),
    );
  });
  return paths;
}

const attempts = async (pairId: number) =>
  (await admin().connectors.indexAttempts({ cc_pair_id: pairId, page_num: 0, page_size: 10 })).items;

describe('resumable attempts', () => {
  it('a rate limit mid-run keeps the checkpoint, frees the worker, shows the resume time, and resumes without re-fetching', async () => {
    const paths = section('/rl', 60, 'ocelot');
    // 20 pages are served, then one 429 asks for 30 s: longer than the client sleeps, so the attempt waits.
    site.rateLimit = { after: 20, remaining: 1, retryAfter: 30 };
    const { pairId } = await webPair('/rl/');
    const started = Date.now();
    await pass();
    expect(Date.now() - started).toBeLessThan(10_000);
    const kept = (await docIds(pairId)).length;
    expect(kept).toBeGreaterThanOrEqual(20);
    expect(kept).toBeLessThan(60);
    const [waiting] = await attempts(pairId);
    expect(waiting).toMatchObject({ status: 'not_started', error_msg: null });
    const status = (await admin().connectors.indexingStatus({})).find((s) => s.cc_pair_id === pairId);
    expect(status?.indexing).toBe(false);
    expect(status?.progress?.waiting_reason).toContain('429');
    const until = new Date(status?.progress?.waiting_until ?? 0).getTime();
    expect(until).toBeGreaterThan(Date.now() + 20_000);
    expect(status?.progress?.docs_done).toBe(kept);
    const details = await admin().connectors.getPair({ cc_pair_id: pairId });
    expect(details.progress?.waiting_until).toBe(status?.progress?.waiting_until);
    expect(details.in_repeated_error_state).toBe(false);

    // Before the time it is not claimed again: no request reaches the site.
    const before = [...site.hits.values()].reduce((a, b) => a + b, 0);
    await pass();
    expect([...site.hits.values()].reduce((a, b) => a + b, 0)).toBe(before);

    // The time comes (moved forward here instead of waiting 30 s): the same attempt resumes from its checkpoint.
    await sql`UPDATE index_attempts SET resume_at = now() - interval '1 second' WHERE id = ${waiting?.id}`.execute(
      t.deps.db,
    );
    await pass();
    expect(await docIds(pairId)).toEqual([...paths.map((p) => `${site.url}${p}`)].sort());
    const all = await attempts(pairId);
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ id: waiting?.id, status: 'success', total_docs_indexed: 60 });
    expect(all[0]?.progress).toMatchObject({ docs_done: 60, docs_total: 60, waiting_until: null });
    // Every page was fetched once; only the one answered 429 was asked twice.
    const perPage = paths.map((p) => site.hits.get(p) ?? 0);
    expect(perPage.filter((n) => n === 1)).toHaveLength(59);
    expect(perPage.filter((n) => n === 2)).toHaveLength(1);
  }, 60_000);

  it('a failed attempt leaves its checkpoint to the next one, which continues it; totals add up once', async () => {
    const paths = section('/tf', 120, 'tapir');
    site.delayMs = 15;
    const { pairId } = await webPair('/tf/');
    const running = pass();
    for (let i = 0; i < 400 && (await docIds(pairId)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    site.failWith = 401;
    await running;
    const [failed] = await attempts(pairId);
    expect(failed).toMatchObject({ status: 'failed', error_msg: expect.stringContaining('401') });
    const kept = (await docIds(pairId)).length;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(120);
    const status = (await admin().connectors.indexingStatus({})).find((s) => s.cc_pair_id === pairId);
    expect(status?.last_failure).toContain('401');

    site.failWith = null;
    site.delayMs = 0;
    await pass();
    const [resumed, first] = await attempts(pairId);
    expect(first?.id).toBe(failed?.id);
    expect(resumed).toMatchObject({ status: 'success', resumed_from: failed?.id });
    expect(await docIds(pairId)).toHaveLength(120);
    // The home page (the start of the crawl) was not read again.
    expect(site.hits.get(paths[0] as string)).toBe(1);
    // Each document is counted once across the two attempts; the run's progress counts both.
    expect((resumed?.total_docs_indexed ?? 0) + (first?.total_docs_indexed ?? 0)).toBe(120);
    expect(resumed?.progress.docs_done).toBe(120);
  }, 60_000);

  it('run-once from the beginning drops a waiting attempt’s checkpoint', async () => {
    section('/fb', 30, 'okapi');
    site.rateLimit = { after: 10, remaining: 1, retryAfter: 30 };
    const { connectorId, pairId } = await webPair('/fb/');
    await pass();
    const [waiting] = await attempts(pairId);
    expect(waiting?.status).toBe('not_started');
    await admin().connectors.runOnce({ connector_id: connectorId, from_beginning: true });
    const [restarted] = await attempts(pairId);
    expect(restarted).toMatchObject({ id: waiting?.id, from_beginning: true });
    expect(restarted?.progress.waiting_until).toBeNull();
    const homeHits = site.hits.get('/fb/') ?? 0;
    await pass();
    expect((await attempts(pairId))[0]?.status).toBe('success');
    expect(site.hits.get('/fb/')).toBe(homeHits + 1);
  }, 60_000);
});

describe('per-item failures', () => {
  it('a poisoned page and a broken link are listed on /errors; the others are indexed; retried next run', async () => {
    const paths = section('/pi', 10, 'quoll');
    site.statuses.set('/pi/p3', 500);
    site.pages.set('/pi/p5', htmlPage('quoll 5', 'page 5 about the quoll', ['/pi/gone']));
    const { connectorId, pairId } = await webPair('/pi/');
    await pass();
    const u = (p: string) => `${site.url}${p}`;
    expect(await docIds(pairId)).toEqual(
      paths
        .filter((p) => p !== '/pi/p3')
        .map(u)
        .sort(),
    );
    const [attempt] = await attempts(pairId);
    expect(attempt).toMatchObject({ status: 'completed_with_errors', error_count: 2 });
    const errors = await admin().connectors.errors({
      cc_pair_id: pairId,
      page_num: 0,
      page_size: 10,
    });
    expect(errors.items.map((e) => [e.document_link, e.failure_message]).sort()).toEqual(
      [
        [u('/pi/gone'), 'Broken link: HTTP 404'],
        [u('/pi/p3'), 'HTTP 500'],
      ].sort(),
    );
    expect(errors.items.every((e) => e.index_attempt_id === attempt?.id)).toBe(true);
    const status = (await admin().connectors.indexingStatus({})).find((s) => s.cc_pair_id === pairId);
    expect(status?.last_failure).toMatch(/HTTP (500|404)/);

    // Fixed at the source: the next run reads it again and indexes it.
    site.statuses.delete('/pi/p3');
    site.pages.set('/pi/p5', htmlPage('quoll 5', 'page 5 about the quoll', []));
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect(await docIds(pairId)).toEqual(paths.map(u).sort());
    expect((await attempts(pairId))[0]).toMatchObject({ status: 'success' });
    const after = (await admin().connectors.indexingStatus({})).find((s) => s.cc_pair_id === pairId);
    expect(after?.last_failure).toBeNull();
  }, 60_000);
});

describe('per-item failures of a polling source', () => {
  it('an item that failed is read again by the next polls until it is indexed; the others are not re-read', async () => {
    const old = new Date(Date.now() - 2 * 3600_000);
    ledger.items.set('a', { text: 'the aardvark ledger entry', updated: old, poisoned: false });
    ledger.items.set('b', { text: 'the bandicoot ledger entry', updated: old, poisoned: false });
    const { id: connectorId } = await admin().connectors.create({
      name: 'ledger',
      source: 'ledger',
      input_type: 'poll',
      connector_specific_config: {},
      access_type: 'public',
      refresh_freq: 3600,
    });
    const credential = await admin().connectors.createCredential({ source: 'ledger', credential_json: {} });
    const pairId = (
      await admin().connectors.createPair({
        connector_id: connectorId,
        credential_id: credential.id,
        name: 'ledger',
      })
    ).data as number;
    await pass();
    expect((await attempts(pairId))[0]?.status).toBe('success');

    // A new item that cannot be read: the poll indexes the rest and completes with errors.
    ledger.items.set('c', { text: 'the civet ledger entry', updated: new Date(), poisoned: true });
    ledger.items.set('d', { text: 'the dingo ledger entry', updated: new Date(), poisoned: false });
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect((await attempts(pairId))[0]).toMatchObject({ status: 'completed_with_errors', error_count: 1 });
    expect(await docIds(pairId)).toEqual(['ledger:a', 'ledger:b', 'ledger:d']);
    const errors = await admin().connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 10 });
    expect(errors.items).toMatchObject([
      {
        document_id: 'ledger:c',
        document_link: 'https://ledger.example/c',
        failure_message: 'Export too large',
      },
    ]);
    const status = (await admin().connectors.indexingStatus({})).find((s) => s.cc_pair_id === pairId);
    expect(status?.last_failure).toBe('Export too large (https://ledger.example/c)');

    // The next polls still cover it (the window does not move past a failure) until it is indexed.
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect(ledger.reads.get('c')).toBe(2);
    const fixed = ledger.items.get('c');
    if (fixed) fixed.poisoned = false;
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect((await attempts(pairId))[0]?.status).toBe('success');
    expect(await docIds(pairId)).toEqual(['ledger:a', 'ledger:b', 'ledger:c', 'ledger:d']);
    expect(ledger.reads.get('c')).toBe(3);
    // The items of earlier windows were read by the first run only.
    expect([ledger.reads.get('a'), ledger.reads.get('b')]).toEqual([1, 1]);
  }, 60_000);
});

describe('progress', () => {
  it('rate and ETA count only the time the attempt ran, not waits or pauses', () => {
    const hourAgo = new Date(Date.now() - 3600_000);
    const row = {
      status: 'not_started',
      time_started: hourAgo,
      run_started_at: null,
      active_ms: 10_000,
      docs_done: 50,
      docs_resumed: 50,
      docs_total: 200,
      resume_at: new Date(Date.now() + 60_000),
      waiting_reason: 'GitHub rate limit',
    } as unknown as AttemptRow;
    expect(progressOf(row)).toMatchObject({
      docs_done: 100,
      docs_total: 200,
      docs_per_second: 5,
      eta_seconds: 20,
      waiting_reason: 'GitHub rate limit',
    });
  });
});
