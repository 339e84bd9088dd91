"""domainMetadata (PROTOCOL.md "Domain Metadata"): its traces are the live domains; the
pre-downgrade removes them (``removed: true``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.features.base import RemovableFeature, TraceContext
from delta_downgrade.protocol.actions import DomainMetadata

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun


class DomainMetadataFeature(RemovableFeature):
    name = "domainMetadata"

    def remove_traces(self, run: DropRun) -> bool:
        snapshot = run.latest()
        domains = TraceContext(snapshot).live_domains
        if not domains:
            return False
        run.commit([DomainMetadata(domain=d.domain, configuration=d.configuration, removed=True)
                    for d in domains.values()], "DOMAIN METADATA CLEANUP", {}, read_version=snapshot.version)
        return True

    def traces(self, ctx: TraceContext) -> list[str]:
        domains = sorted(ctx.live_domains)
        return [f"domain(s) {', '.join(domains)}"] if domains else []


DOMAIN_METADATA = DomainMetadataFeature()
