/**
 * Who did something, as the audit trail records it: the key (its id, and its name at the time)
 * and the request, or the CLI or the server itself.
 */
export interface Actor {
  /** `api_key:<id>`, `cli`, `system` or `anonymous` (the `actor` column). */
  label: string;
  keyId: string | null;
  keyName: string | null;
  requestId: string | null;
  /** The client's address (through TRUST_PROXY, the one X-Forwarded-For names). */
  address?: string;
}

export const SYSTEM: Actor = Object.freeze({
  label: 'system',
  keyId: null,
  keyName: null,
  requestId: null,
});

export const CLI: Actor = Object.freeze({
  label: 'cli',
  keyId: null,
  keyName: null,
  requestId: null,
});

/** The actor of a request made with a key (null principal: anonymous). */
export function requestActor(request: {
  principal: { apiKeyId: string; keyName: string } | null;
  id: string;
  ip: string;
}): Actor {
  const { principal, id: requestId, ip: address } = request;
  return principal === null
    ? { label: 'anonymous', keyId: null, keyName: null, requestId, address }
    : {
        label: `api_key:${principal.apiKeyId}`,
        keyId: principal.apiKeyId,
        keyName: principal.keyName,
        requestId,
        address,
      };
}
