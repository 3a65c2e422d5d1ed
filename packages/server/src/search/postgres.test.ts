import { searchIndexContract } from './search-index.contract.ts';

searchIndexContract('Postgres full-text search', () => ({}));
