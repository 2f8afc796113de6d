# the user's launcher (left alone)
torchrun --nproc_per_node=1 scripts/training/run_recipe.py --recipe vanilla_gpt_pretrain_config
