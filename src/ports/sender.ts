/**
 * Who wrote a message, as the channel adapter vouches for it. `authority` lists the scopes the channel
 * grants this person (`member`, `admin`, ...). A message without a sender comes from the session's
 * single anonymous user.
 */
export interface Sender {
  id: string;
  name?: string;
  authority?: string[];
}
