"""The pipeline stages: the write stage (ingest + extractors), consolidation and decay."""

from __future__ import annotations

from memspec.reference.pipeline.decay import (
    DecayConfig,
    DecayReport,
    Protection,
    SalienceScores,
    decay,
    salience,
)
from memspec.reference.pipeline.extractor import (
    Extractor,
    HeuristicExtractor,
    VerbatimExtractor,
)
from memspec.reference.pipeline.ingest import IngestRejection, IngestReport, ingest

__all__ = [
    "DecayConfig",
    "DecayReport",
    "Extractor",
    "HeuristicExtractor",
    "IngestRejection",
    "IngestReport",
    "Protection",
    "SalienceScores",
    "VerbatimExtractor",
    "decay",
    "ingest",
    "salience",
]

# Consolidation exports (appended by the consolidation owner).
from memspec.reference.pipeline.consolidation import (
    PASSES,
    PROMOTION_SLOT,
    Action,
    ConsolidationConfig,
    ConsolidationOperators,
    ConsolidationReport,
    Deferral,
    Rejection,
    candidate_pairs,
    consolidate,
    default_operators,
    promotion_signature,
)
from memspec.reference.pipeline.operators import (
    CONSOLIDATION_KIND,
    CORRECTION_KINDS,
    NEGATION_REASON,
    ContradictionOperator,
    HeuristicContradictionOperator,
    HeuristicResolutionOperator,
    NearDupOperator,
    Resolution,
    ResolutionOperator,
    TrigramNearDupOperator,
    strength_key,
)

__all__ += [
    "CONSOLIDATION_KIND",
    "CORRECTION_KINDS",
    "NEGATION_REASON",
    "PASSES",
    "PROMOTION_SLOT",
    "Action",
    "ConsolidationConfig",
    "ConsolidationOperators",
    "ConsolidationReport",
    "ContradictionOperator",
    "Deferral",
    "HeuristicContradictionOperator",
    "HeuristicResolutionOperator",
    "NearDupOperator",
    "Rejection",
    "Resolution",
    "ResolutionOperator",
    "TrigramNearDupOperator",
    "candidate_pairs",
    "consolidate",
    "default_operators",
    "promotion_signature",
    "strength_key",
]
