import { z } from 'zod';
import { AppError } from '../errors.ts';

export const OAuthGrant = z
  .object({
    id: z.number().int(),
    client_id: z.string(),
    client_name: z.string().nullable().meta({ description: 'The name the client registered with' }),
    redirect_hosts: z.array(z.string()).meta({ description: 'Where the client receives its codes' }),
    user_id: z.string(),
    email: z.string(),
    scopes: z.array(z.string()).meta({ description: '`search` (search and fetch), `ask`, `ingest`' }),
    resource: z.string().meta({ description: 'The MCP endpoint its tokens are for' }),
    created_at: z.string(),
    last_used_at: z
      .string()
      .nullable()
      .meta({ description: 'Last time its tokens were issued or refreshed' }),
  })
  .meta({ id: 'OAuthGrant' });
export type OAuthGrant = z.infer<typeof OAuthGrant>;

export const OAuthGrantIdInput = z.object({ grant_id: z.number().int().positive() });

/** The OAuth error codes (RFC 6749 §5.2, RFC 8707) the authorization server answers with. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'invalid_client_metadata'
  | 'invalid_redirect_uri';

/**
 * A refusal in the OAuth protocol's own terms: the transport answers it as the OAuth error `oauth_error`
 * (400 with `{error, error_description}`, or a redirect carrying them), not as the API's envelope.
 */
export class OAuthProtocolError extends AppError {
  readonly oauth_error: OAuthErrorCode;
  constructor(oauthError: OAuthErrorCode, detail: string) {
    super('BAD_REQUEST', detail);
    this.name = 'OAuthProtocolError';
    this.oauth_error = oauthError;
  }
}
