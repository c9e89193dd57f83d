import type { Gateway } from "../gateway/create-gateway.js";
import { validateSessionKey } from "../gateway/inbound/validate-inbound.js";
import { HttpError, sendJson } from "./http-error.js";
import type { Route } from "./router.js";

const STATUSES = ["pending", "sent", "dismissed", "expired"] as const;

/** `GET /v1/commitments?session=&status=` and `POST /v1/commitments/{id}/dismiss` (docs/http.md). */
export function commitmentRoutes(gateway: Gateway): Route[] {
  return [
    {
      method: "GET",
      path: "/v1/commitments",
      handler({ url, res }) {
        const session = url.searchParams.get("session");
        const status = url.searchParams.get("status");
        if (status !== null && !(STATUSES as readonly string[]).includes(status))
          throw new HttpError(
            400,
            "INVALID_INPUT",
            `status: expected one of ${STATUSES.join(", ")}`,
            "status",
          );
        const commitments = gateway.commitments.list({
          ...(session !== null ? { session: validateSessionKey(session, gateway.config, "session") } : {}),
          ...(status !== null ? { status: status as (typeof STATUSES)[number] } : {}),
        });
        sendJson(res, 200, { commitments });
      },
    },
    {
      method: "POST",
      path: "/v1/commitments/:id/dismiss",
      async handler({ params, res }) {
        const commitment = await gateway.commitments.dismiss(params.id!);
        if (!commitment) throw new HttpError(404, "NOT_FOUND", `no commitment "${params.id}"`, "id");
        sendJson(res, 200, { commitment });
      },
    },
  ];
}
