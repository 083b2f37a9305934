// Breaking News's listed actions by type, as the table's controls take them.
import type { BreakingNewsAction } from "../../client/types.gen";

type Listed<Type extends BreakingNewsAction["type"]> = Extract<BreakingNewsAction, { type: Type }>;
export type PlaceAction = Listed<"PlaceCard">;
export type StoryAction = Listed<"CompleteObject" | "TellStory">;
