/**
 * External principals: how a `sync` source names who may see a document, and what a user is known as
 * at sources. Documents store them in `documents.access_external`; a user's principals are computed
 * from their email, linked identities and external group memberships. Connectors build both sides
 * with these functions so they always match.
 */

/** A person by email (case-insensitive): what Google Drive, Confluence and most sources list. */
export function emailPrincipal(email: string): string {
  return `email:${email.trim().toLowerCase()}`;
}

/** A person by their account at a source: `userPrincipal('github', 'octocat')`, a Slack user id, … */
export function userPrincipal(source: string, externalId: string): string {
  return `user:${source}:${externalId}`;
}

/** A group at a source, whose members connectors record with `replaceExternalGroupMembers`. */
export function groupPrincipal(source: string, groupId: string): string {
  return `group:${source}:${groupId}`;
}

/**
 * Sources whose documents may be granted to a whole email domain (a Google Drive permission of type
 * `domain`): such a grant is the group `domainGroupId(domain)` of the source, and a person is in it
 * when one of their linked identities at that source is an email of the domain.
 */
export const DOMAIN_GRANT_SOURCES = ['google_drive'] as const;

/** The group id of a domain grant (`domain:acme.com`). */
export function domainGroupId(domain: string): string {
  return `domain:${domain.trim().toLowerCase()}`;
}
